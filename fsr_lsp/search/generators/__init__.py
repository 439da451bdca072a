"""Who proposes rewrites: the interface (base.py), a language model behind any OpenAI-compatible
endpoint (llm.py), structural rewrites behind recognisers (structural/), and the built-in tuner
(tuner/), used when no endpoint is set."""
