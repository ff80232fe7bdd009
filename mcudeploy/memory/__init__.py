from mcudeploy.memory.alias import Slot, contiguous, row_major
from mcudeploy.memory.lifetimes import Buffer, Lifetimes, align_up, lifetimes
from mcudeploy.memory.place import METHODS, Placement, check_no_overlap, place
from mcudeploy.memory.regions import Area, areas

__all__ = ["METHODS", "Area", "Buffer", "Lifetimes", "Placement", "Slot", "align_up", "areas", "check_no_overlap",
           "contiguous", "lifetimes", "place", "row_major"]
