"""The FSR search: generators propose rewrites, the evaluator verifies and times them, the
fastest seed the next round, and every candidate is kept in the workspace's history."""

from .config import LLMConfig, SearchConfig
from .loop import Bench, Progress, SearchControl, SearchOutcome, run_search
from .proposal import Proposal, Tried
from .store import HistoryStore, search_key

__all__ = ["Bench", "HistoryStore", "LLMConfig", "Progress", "Proposal", "SearchConfig", "SearchOutcome", "Tried",
           "SearchControl", "run_search", "search_key"]
