"""Who the results browser answers: its own address as Host, its own pages as Origin."""

from ragproof_serve.guard import own_hosts, refusal

HOSTS = own_hosts(8765)


def test_only_its_own_host_is_answered():
    assert refusal({"host": "127.0.0.1:8765"}, "GET", HOSTS) is None
    assert refusal({"host": "LOCALHOST:8765"}, "GET", HOSTS) is None
    for host in ("evil.example", "evil.example:8765", "127.0.0.1:8766", "127.0.0.1", ""):
        assert "Host" in refusal({"host": host}, "GET", HOSTS)
    assert refusal({}, "GET", HOSTS) is not None


def test_a_state_change_needs_its_own_origin():
    own = {"host": "127.0.0.1:8765", "origin": "http://127.0.0.1:8765"}
    assert refusal(own, "POST", HOSTS) is None
    assert refusal({**own, "origin": "http://localhost:8765"}, "DELETE", HOSTS) is None
    for origin in ("http://evil.example", "https://127.0.0.1:8765", "null", ""):
        assert refusal({**own, "origin": origin}, "POST", HOSTS) is not None
    assert refusal({"host": "127.0.0.1:8765"}, "PUT", HOSTS) is not None  # no Origin at all
    # Reading needs no Origin: a link or the address bar sends none.
    assert (
        refusal({"host": "127.0.0.1:8765", "origin": "http://evil.example"}, "GET", HOSTS) is None
    )
