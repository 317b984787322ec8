"""Perturbations: rule generators (`rules`), LLM generation and validation
(`llm`), and the whole suite's generation (`generate`)."""
