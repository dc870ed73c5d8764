"""``GET /metrics`` read by Prometheus's own parser (``prometheus_client``), and
``GET /openapi.json`` checked by an OpenAPI validator and against what ``POST /score`` answers.

Every wait is bounded; the server started here is stopped.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
from test_serve import HOST, Server, _get, _post
from test_serve_bodies import MAX_BODY, small_budget_server

parser = pytest.importorskip("prometheus_client.parser")


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    yield from small_budget_server()


def _metrics(server: Server) -> dict[str, list]:
    with socket.create_connection((HOST, server.port), timeout=10) as sock:
        sock.sendall(f"GET /metrics HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert b" 200 " in head.split(b"\r\n")[0] and b"text/plain; version=0.0.4" in head
    families = {f.name: f.samples for f in parser.text_string_to_metric_families(body.decode())}
    return families


def _value(samples: list, name: str, **labels: str) -> float:
    found = [
        s.value
        for s in samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    ]
    assert len(found) == 1, (name, labels, samples)
    return found[0]


def test_metrics_count_answers_by_status_and_time_each_stage(server: Server) -> None:
    before = _metrics(server)
    ok_before = sum(
        s.value for s in before.get("bertscore_requests", []) if s.labels["status"] == "200"
    )
    assert _post(server, {"cands": ["the cat sat"], "refs": ["a cat sat"]})[0] == 200
    assert _post(server, {"cands": ["a", 3], "refs": ["a", "b"]})[0] == 422
    got = _metrics(server)
    counts = got["bertscore_requests"]
    assert _value(counts, "bertscore_requests_total", status="200") == ok_before + 1
    assert _value(counts, "bertscore_requests_total", status="422") >= 1
    durations = got["bertscore_request_duration_seconds"]
    for stage in ("read", "parse", "request"):
        assert _value(durations, "bertscore_request_duration_seconds_count", stage=stage) >= 2
    for stage in ("queue", "score"):  # the 422 never reached the worker
        assert _value(durations, "bertscore_request_duration_seconds_count", stage=stage) >= 1
    inf = _value(durations, "bertscore_request_duration_seconds_bucket", stage="request", le="+Inf")
    assert inf == _value(durations, "bertscore_request_duration_seconds_count", stage="request")
    assert _value(got["bertscore_queue_size"], "bertscore_queue_size") == 0
    assert (
        _value(got["bertscore_queued_tokens_budget"], "bertscore_queued_tokens_budget")
        == 4 * MAX_BODY
    )
    assert _value(got["bertscore_encoder_rate"], "bertscore_encoder_rate") > 0  # calibrated
    reasons = {s.labels["reason"] for s in got["bertscore_request_failures"]}
    assert {"budget", "client_share", "too_slow", "timed_out", "cut"} <= reasons


def test_metrics_show_a_client_holding_its_share(server: Server) -> None:
    """Bodies in flight from one address: the tokens it holds, its share, and the refusal
    past its share, as a dashboard would see them."""
    head = (
        f"POST /score HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: {MAX_BODY}\r\n"
        "Connection: close\r\n\r\n"
    ).encode()
    hogs = []
    try:
        for _ in range(2):
            sock = socket.create_connection((HOST, server.port), timeout=10)
            sock.sendall(head + b"x" * (200 * 1024))
            hogs.append(sock)
        time.sleep(0.3)
        got = _metrics(server)
        held = _value(
            got["bertscore_client_queued_tokens"],
            "bertscore_client_queued_tokens",
            client="127.0.0.1",
        )
        assert held >= 2 * 200 * 1024
        share = _value(got["bertscore_client_share_max"], "bertscore_client_share_max")
        assert share == pytest.approx(held / (4 * MAX_BODY))
    finally:
        for sock in hogs:
            sock.close()


def test_the_openapi_document_is_valid_and_describes_the_answers(server: Server) -> None:
    validator = pytest.importorskip("openapi_spec_validator")
    jsonschema = pytest.importorskip("jsonschema")
    status, doc = _get(server, "/openapi.json")
    assert status == 200
    validator.validate(doc)
    assert set(doc["paths"]) == {"/score", "/health", "/ready", "/metrics", "/openapi.json"}
    schemas = doc["components"]["schemas"]

    def check(instance: object, name: str) -> None:
        schema = {**schemas[name], "components": doc["components"]}
        jsonschema.validate(instance, schema)

    request = {"cands": ["the cat sat", "a dog"], "refs": [["a cat sat", "cats"], ["the dog"]]}
    check(request, "ScoreRequest")
    status, answer = _post(server, request)
    assert status == 200
    check(answer, "ScoreResponse")
    status, answer = _post(server, {"cands": ["a", 3], "refs": ["a", "b"]})
    assert status == 422
    check(answer, "Error")
    bad = {"cands": "a cat", "refs": ["a"]}
    with pytest.raises(jsonschema.ValidationError):
        check(bad, "ScoreRequest")
    assert _post(server, bad)[0] == 422  # what the schema refuses, the server refuses
    assert doc["components"]["schemas"]["ScoreRequest"]["properties"]["cands"]["maxItems"] == 1024
    assert json.loads(json.dumps(doc)) == doc
