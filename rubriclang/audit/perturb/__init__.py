"""Perturbations: deterministic generators (`deterministic`), LLM generation
and validation (`llm`), and the whole suite's generation (`generate`)."""
