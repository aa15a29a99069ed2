// A listing page after page (core/remote/object_listing.hpp): pages parsed whole, a
// continuation token given again refused naming the page, and the bounds of pages and objects.
// The same against a store that lies on a loopback socket: tests/test_s3_faults.cpp.
#include <gtest/gtest.h>

#include "core/remote/object_listing.hpp"

namespace conveyor {
namespace {

const std::string where = "s3://bucket/set/";

std::string page_xml(const std::string& contents, const std::string& token) {
  return "<?xml version=\"1.0\"?><ListBucketResult><Name>bucket</Name>" + contents +
         "<IsTruncated>" + (token.empty() ? "false" : "true") + "</IsTruncated>" +
         (token.empty() ? "" : "<NextContinuationToken>" + token + "</NextContinuationToken>") +
         "</ListBucketResult>";
}

listing_page page_of(std::vector<std::string> keys, std::string token) {
  listing_page p;
  for (auto& k : keys) {
    p.objects.push_back({std::move(k), 100});
  }
  p.next_token = std::move(token);
  return p;
}

TEST(ObjectListing, APageGivesItsObjectsAndToken) {
  auto page =
      parse_listing_page(page_xml("<Contents><Key>set/a.tar</Key><Size>10240</Size></Contents>"
                                  "<Contents><Key>set/b&amp;c.tar</Key><Size>0</Size></Contents>",
                                  "t1"),
                         where);
  ASSERT_TRUE(page) << page.error().what();
  ASSERT_EQ(page->objects.size(), 2u);
  EXPECT_EQ(page->objects[0].key, "set/a.tar");
  EXPECT_EQ(page->objects[0].size, 10240u);
  EXPECT_EQ(page->objects[1].key, "set/b&c.tar");
  EXPECT_EQ(page->next_token, "t1");
  auto last = parse_listing_page(page_xml("", ""), where);
  ASSERT_TRUE(last);
  EXPECT_TRUE(last->objects.empty());
  EXPECT_TRUE(last->next_token.empty());
}

TEST(ObjectListing, APageThatIsNoListingIsRefusedNamingThePrefix) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"<Error><Code>x</Code></Error>", "not a ListBucketResult"},
      {page_xml("<Contents><Key>k</Key></Contents>", ""), "without a Key or a Size"},
      {page_xml("<Contents><Key>k</Key><Size>-1</Size></Contents>", ""), "not a number"},
      {page_xml("<Contents><Key>k</Key><Size>99999999999999999999</Size></Contents>", ""),
       "not a number"},
      {page_xml("<Contents><Key>" + std::string(1025, 'k') + "</Key><Size>1</Size></Contents>", ""),
       "longer than S3 allows"},
      {"<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>",
       "without a continuation token"},
  };
  for (const auto& [xml, words] : bad) {
    auto page = parse_listing_page(xml, where);
    ASSERT_FALSE(page) << xml;
    EXPECT_EQ(page.error().code(), errc::io_error);
    EXPECT_EQ(page.error().message().rfind(where, 0), 0u) << page.error().message();
    EXPECT_NE(page.error().message().find(words), std::string::npos) << page.error().message();
  }
}

TEST(ObjectListing, PagesAddUpInOrderUntilTheLast) {
  object_listing listing(where);
  EXPECT_EQ(*listing.add(page_of({"set/a", "set/b"}, "t1")), "t1");
  EXPECT_EQ(*listing.add(page_of({}, "t2")), "t2");
  EXPECT_EQ(*listing.add(page_of({"set/c"}, "")), "");
  auto objects = std::move(listing).take();
  ASSERT_EQ(objects.size(), 3u);
  EXPECT_EQ(objects[2].key, "set/c");
}

TEST(ObjectListing, ATokenGivenAgainIsRefusedNamingBothPages) {
  object_listing listing(where);
  ASSERT_TRUE(listing.add(page_of({"set/a"}, "t1")));
  ASSERT_TRUE(listing.add(page_of({"set/b"}, "t2")));
  auto again = listing.add(page_of({"set/c"}, "t1"));
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().message(),
            where +
                ": page 3 of the listing gives continuation token \"t1\" again (page 1 gave "
                "it): the store would list the same pages for ever");
}

TEST(ObjectListing, AListingStopsAtItsBoundsOfPagesAndObjects) {
  object_listing pages(where, listing_bounds{3, 100});
  ASSERT_TRUE(pages.add(page_of({}, "t1")));
  ASSERT_TRUE(pages.add(page_of({}, "t2")));
  auto third = pages.add(page_of({}, "t3"));
  ASSERT_FALSE(third);
  EXPECT_NE(third.error().message().find("page 3 of the listing is still truncated after 3 pages"),
            std::string::npos)
      << third.error().message();
  object_listing last_page(where, listing_bounds{3, 100});
  ASSERT_TRUE(last_page.add(page_of({}, "t1")));
  ASSERT_TRUE(last_page.add(page_of({}, "t2")));
  EXPECT_TRUE(last_page.add(page_of({"set/a"}, ""))) << "a last page within the bound is fine";

  object_listing objects(where, listing_bounds{100, 3});
  ASSERT_TRUE(objects.add(page_of({"a", "b"}, "t1")));
  auto past = objects.add(page_of({"c", "d"}, "t2"));
  ASSERT_FALSE(past);
  EXPECT_NE(past.error().message().find("page 2 of the listing brings it past 3 objects"),
            std::string::npos)
      << past.error().message();
  object_listing exactly(where, listing_bounds{100, 3});
  ASSERT_TRUE(exactly.add(page_of({"a", "b"}, "t1")));
  EXPECT_TRUE(exactly.add(page_of({"c"}, "")));
}

}  // namespace
}  // namespace conveyor
