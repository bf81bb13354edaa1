"""The [placement] options that shape candidate generation, and the knobs
that let tests compare the fast paths with the plain ones.
"""
import dataclasses
from typing import Any

BREADTH_FIRST = 'breadth-first'


@dataclasses.dataclass
class Settings:
    """How candidates are generated.

    ``randomize``, ``max_candidates``, ``strategy`` and ``max_returned``
    (0: no bound) are the [placement] options. The others change how
    much is read, never what is found (the tests compare both ways):
    ``narrow`` reads only the inventory rows that can matter;
    ``batched`` reads the trees a batch at a time when a limit means not
    all candidates are needed, the first batch holding at least
    ``first_batch`` trees.
    """
    randomize: bool = False
    max_candidates: int = -1
    strategy: str = 'depth-first'
    max_returned: int = 0
    narrow: bool = True
    batched: bool = True
    first_batch: int = 100

    @classmethod
    def from_conf(cls, conf: Any) -> 'Settings':
        group = conf.placement
        return cls(group.randomize_allocation_candidates,
                   group.max_allocation_candidates,
                   group.allocation_candidates_generation_strategy,
                   group.max_returned_allocation_candidates)

    @property
    def breadth_first(self) -> bool:
        return self.strategy == BREADTH_FIRST
