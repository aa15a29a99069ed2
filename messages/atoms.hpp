#pragma once
/// The atoms of Conveyor's messages (CAF 0.17: at most 10 characters each).

#include <caf/atom.hpp>

namespace conveyor::atoms {

using connect = caf::atom_constant<caf::atom("connect")>;
using read = caf::atom_constant<caf::atom("read")>;
using prepare = caf::atom_constant<caf::atom("prepare")>;
using prepared = caf::atom_constant<caf::atom("prepared")>;
using failed = caf::atom_constant<caf::atom("failed")>;
using batch = caf::atom_constant<caf::atom("batch")>;
using credit = caf::atom_constant<caf::atom("credit")>;
using release = caf::atom_constant<caf::atom("release")>;
using tick = caf::atom_constant<caf::atom("tick")>;
using report = caf::atom_constant<caf::atom("report")>;
using budget = caf::atom_constant<caf::atom("budget")>;
using permit = caf::atom_constant<caf::atom("permit")>;
using handed_off = caf::atom_constant<caf::atom("handed_off")>;
using finish = caf::atom_constant<caf::atom("finish")>;
using worker_up = caf::atom_constant<caf::atom("worker_up")>;
using worker_down = caf::atom_constant<caf::atom("worker_dn")>;
using restart = caf::atom_constant<caf::atom("restart")>;
using hello = caf::atom_constant<caf::atom("hello")>;
using fetch = caf::atom_constant<caf::atom("fetch")>;
using peers_up = caf::atom_constant<caf::atom("peers_up")>;
using leave = caf::atom_constant<caf::atom("leave")>;
using greeted = caf::atom_constant<caf::atom("greeted")>;
using tune = caf::atom_constant<caf::atom("tune")>;

}  // namespace conveyor::atoms
