"""LLM criteria: an OpenAI-compatible HTTP client, a call cache, prompts and
parsing, the embedded local model, batch files and the rubric compiler."""
