"""lcm: Lossless Context Management for an agent's lcm.db."""

# A literal, so `lcm --version` needs no package metadata lookup at start-up.
__version__ = "0.1.0"

# typing.TYPE_CHECKING without importing typing, which costs a command about 4 ms of its
# start-up: modules on the read path import their annotation-only names under
# ``if TYPE_CHECKING:`` with this flag (type checkers treat any flag of this name as true).
TYPE_CHECKING = False
