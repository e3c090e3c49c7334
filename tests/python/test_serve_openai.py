"""The official `openai` Python client against a real `dory serve`: completions, chat,
streaming, the model list, Dory's extensions, and errors as the client raises them."""

import openai
import pytest
import requests

from serve_harness import missing


@pytest.fixture(scope="module")
def client(server):
    # No retries: a 503 or a 500 must show up as what it is.
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key="not-needed", max_retries=0, timeout=60)


def test_models_lists_the_served_model(client):
    models = client.models.list().data
    assert [m.id for m in models] == ["tiny"]
    assert models[0].model_extra["dory"]["passes"] == 3


def test_completion(client):
    r = client.completions.create(model="any-name", prompt="The sea", max_tokens=9, temperature=0)
    assert r.object == "text_completion"
    assert r.model == "any-name"
    assert r.choices[0].finish_reason == "length"
    assert r.usage.completion_tokens == 9
    assert r.usage.total_tokens == r.usage.prompt_tokens + 9
    dory = r.model_extra["dory"]
    assert len(dory["passes"]) == 9 and all(1 <= p <= 3 for p in dory["passes"])
    assert dory["attention"] == "exact" and dory["cache_bytes"] > 0
    again = client.completions.create(model="any-name", prompt="The sea", max_tokens=9, temperature=0)
    assert again.choices[0].text == r.choices[0].text


def test_streamed_completion_matches_the_whole_one(client):
    args = dict(model="m", prompt="Once", max_tokens=12, temperature=0.8, seed=7)
    whole = client.completions.create(**args)
    chunks = list(client.completions.create(**args, stream=True, stream_options={"include_usage": True}))
    text = "".join(c.choices[0].text for c in chunks if c.choices)
    assert text == whole.choices[0].text
    tokens = [c for c in chunks if c.model_extra.get("dory", {}).get("token") is not None]
    assert len(tokens) == 12, "one chunk per generated token"
    assert [c.model_extra["dory"]["passes"] for c in tokens] == whole.model_extra["dory"]["passes"]
    assert chunks[-1].usage.completion_tokens == 12
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"


def test_chat(client):
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello?"}]
    r = client.chat.completions.create(model="chatty", messages=messages, max_tokens=6, temperature=0)
    assert r.object == "chat.completion"
    assert r.model == "chatty"
    assert r.choices[0].message.role == "assistant"
    assert r.usage.completion_tokens <= 6
    stream = client.chat.completions.create(model="chatty", messages=messages, max_tokens=6, temperature=0, stream=True)
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert streamed == r.choices[0].message.content
    assert chunks[-1].choices[0].finish_reason in ("length", "stop")


def test_stop_strings(client):
    full = client.completions.create(model="m", prompt="abc", max_tokens=30, temperature=0).choices[0].text
    stop = full[6:8]
    r = client.completions.create(model="m", prompt="abc", max_tokens=30, temperature=0, stop=[stop])
    assert r.choices[0].text == full[: full.index(stop)]
    assert r.choices[0].finish_reason == "stop"


def test_errors_are_openai_errors(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model="m", prompt="x", max_tokens=4, temperature=3)
    assert e.value.status_code == 400
    assert e.value.param == "temperature"
    assert e.value.type == "invalid_request_error"
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x " * 3000}])
    assert e.value.code == "context_length_exceeded"
    with pytest.raises(openai.NotFoundError):
        client.embeddings.create(model="m", input="x")


def test_health_counts_what_was_served(server):
    h = requests.get(f"{server.url}/health", timeout=10).json()
    assert h["status"] == "ok" and h["workers"] == 2
    assert h["failed"] == 0 and h["busy"] == 0


def test_the_wgpu_backend_serves_too(start_server, tiny_model):
    """`--backend wgpu` (a software Vulkan adapter where there is no GPU, as in CI, which
    installs mesa-vulkan-drivers): the same API, every worker on the one device."""
    try:
        s = start_server(tiny_model, "--backend", "wgpu", "--parallel", "2")
    except RuntimeError as e:
        if "adapter" in str(e).lower() or "vulkan" in str(e).lower():
            missing(f"no GPU adapter for --backend wgpu: {e}")
        raise
    models = requests.get(f"{s.url}/v1/models", timeout=10).json()
    assert models["data"][0]["dory"]["backend"].startswith("wgpu"), models
    client = openai.OpenAI(base_url=f"{s.url}/v1", api_key="not-needed", max_retries=0, timeout=120)
    r = client.completions.create(model="m", prompt="The sea", max_tokens=6, temperature=0)
    assert r.usage.completion_tokens == 6
    assert len(r.model_extra["dory"]["passes"]) == 6 and r.model_extra["dory"]["cache_bytes"] > 0
    chunks = list(client.completions.create(model="m", prompt="The sea", max_tokens=6, temperature=0, stream=True))
    assert "".join(c.choices[0].text for c in chunks if c.choices) == r.choices[0].text
