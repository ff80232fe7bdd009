from mcudeploy.memory.lifetimes import Buffer, Lifetimes, align_up, lifetimes
from mcudeploy.memory.place import Placement, check_no_overlap, place

__all__ = ["Buffer", "Lifetimes", "Placement", "align_up", "check_no_overlap", "lifetimes", "place"]
