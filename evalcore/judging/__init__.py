"""Running a pinned judge config from the tool: prompts, the OpenAI-compatible client, the cached
concurrent runner, and a deterministic fake endpoint for tests and trials (``fakeserver``)."""
