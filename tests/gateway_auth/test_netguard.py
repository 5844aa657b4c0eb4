"""The SSRF guard refuses non-http(s) schemes and every spelling of a non-public address."""

from __future__ import annotations

import pytest

from forecourt.errors import ForecourtError
from forecourt.netguard import check_url, check_url_async, resolve_public

UNSAFE = [
    "http://127.0.0.1/",
    "http://localhost:8080/x",
    "http://2130706433/",  # decimal 127.0.0.1
    "http://0177.0.0.1/",  # octal
    "http://0x7f.1/",  # hex, short form
    "http://[::1]/",
    "http://[::ffff:127.0.0.1]/",  # IPv4-mapped IPv6
    "http://[::ffff:a9fe:a9fe]/",  # mapped 169.254.169.254 (cloud metadata)
    "http://169.254.169.254/latest/meta-data/",
    "http://10.2.3.4/",
    "http://172.16.0.1/",
    "http://192.168.1.1/",
    "http://100.64.0.1/",  # carrier-grade NAT
    "http://0.0.0.0/",
    "http://[::]/",
    "http://224.0.0.1/",  # multicast
    "http://240.0.0.1/",  # reserved
    "http://[fe80::1]/",
    "http://[fc00::1]/",
    "http://[2002:7f00:1::]/",  # 6to4 wrapping 127.0.0.1
]


@pytest.mark.parametrize("url", UNSAFE)
def test_non_public_targets_are_refused(url):
    with pytest.raises(ForecourtError) as info:
        check_url(url, allow_private=False)
    assert info.value.code == "net.unsafe_target"
    assert info.value.http_status == 400


@pytest.mark.parametrize("url", ["file:///etc/passwd", "gopher://example.com/", "ftp://8.8.8.8/", "//8.8.8.8/"])
def test_schemes_other_than_http_and_https_are_refused_even_when_private_targets_are_allowed(url):
    with pytest.raises(ForecourtError) as info:
        check_url(url, allow_private=True)
    assert info.value.code == "net.unsafe_target"


@pytest.mark.parametrize("url", ["https://8.8.8.8/keys", "http://[2001:4860:4860::8888]:8443/", "https://1.1.1.1"])
def test_public_addresses_pass(url):
    check_url(url, allow_private=False)


def test_credentials_in_the_url_are_refused():
    with pytest.raises(ForecourtError) as info:
        check_url("https://user:pw@8.8.8.8/", allow_private=False)
    assert info.value.code == "net.unsafe_target"


def test_private_targets_pass_when_allowed():
    check_url("http://127.0.0.1:9999/jwks", allow_private=True)


def test_hosts_the_operator_names_pass_even_on_private_addresses():
    check_url("http://localhost/jwks", allow_private=False, allowed_hosts=["localhost"])
    check_url("http://localhost/jwks", allow_private=False, allowed_hosts=["*.localhost", "localhost"])
    with pytest.raises(ForecourtError):
        check_url("http://localhost/jwks", allow_private=False, allowed_hosts=["*.localhost"])


async def test_the_async_check_resolves_through_the_event_loop():
    with pytest.raises(ForecourtError) as info:
        await check_url_async("http://localhost/", allow_private=False)
    assert info.value.code == "net.unsafe_target"
    assert [str(a) for a in await resolve_public("https://8.8.4.4/", allow_private=False)] == ["8.8.4.4"]


async def test_an_unresolvable_host_is_refused():
    with pytest.raises(ForecourtError) as info:
        await check_url_async("https://no-such-host.invalid/", allow_private=False)
    assert info.value.code == "net.unsafe_target"
