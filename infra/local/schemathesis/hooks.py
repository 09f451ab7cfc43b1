"""Schemathesis hooks for tradesvc (loaded by infra/local/schemathesis.sh via SCHEMATHESIS_HOOKS).

Two jobs, both things an OpenAPI document cannot say by itself:

1. Signing. USER_DATA and TRADE requests (operations with `x-security-type` USER_DATA or TRADE)
   are signed on the wire: a requests auth object sees the prepared request, sets `timestamp`
   to the current time plus a small lead (the timing rule accepts up to 1 s ahead, so even
   recvWindow=1 is met), and replaces the generated `signature` with the lowercase hex
   HMAC-SHA256 of the exact query string followed by the exact body. Only values the schema
   calls valid are touched: a negative case whose timestamp is not an integer, or whose
   signature is missing or malformed, goes out as generated, so the service's refusal of it
   (-1102, -1130, -1022) is what is checked.

2. Data that the document declares by rule rather than by value. In a positive case (the
   generator meant it to be accepted), a `symbol` that names no instrument is replaced by one
   that exists (a ticker's symbol by one that has a quote), a `login` by one in the key's scope
   (a TRADE login by one whose trading is allowed), an exchangeInfo request with both `symbol`
   and `symbols` loses `symbols`, and time windows are put in order and within 7 days. These
   are exactly the data-dependent rules the document's description lists (-1121, -5003, -2022,
   -2024, -1128, -1127). Negative components are never changed, with one exception below.

3. Fresh client order ids. The spec answers a request whose `newClientOrderId` was used before
   from the stored record, before any validation. Generated ids repeat (the document's examples,
   the coverage phase's boundary values), so every well-formed `newClientOrderId` of a TRADE
   request, in any case, is made unique (a well-formed id stays well formed, so no case changes
   its validity); otherwise a schema-violating request reusing an id would rightly be answered
   200 from the record.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import os
import re
import threading
import time
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests
import schemathesis
from schemathesis.core.parameters import ParameterLocation

API_KEY = os.environ["TRADESVC_API_KEY"]
API_SECRET = os.environ["TRADESVC_API_SECRET"].encode()
BASE_URL = os.environ["TRADESVC_BASE_URL"].rstrip("/")
CA_CERT = os.environ["TRADESVC_CA_CERT"]

# How far ahead of the local clock timestamps are set (the service accepts < 1000 ms ahead;
# client and service share this machine's clock).
LEAD_MS = 500
SIGNED = {"USER_DATA", "TRADE"}
INT64_MAX = 2**63 - 1
WEEK_MS = 7 * 24 * 3600 * 1000
HEX64 = re.compile(r"^[0-9a-f]{64}$")
DIGITS = re.compile(r"^[0-9]+$")
CLIENT_ORDER_ID = re.compile(r"^[A-Za-z0-9._-]{1,36}$")
_ids = itertools.count(1)
_run = f"{os.getpid():x}{int(time.time()):x}"


class Live:
    """What exists on the running service, read once with the same key."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loaded = False
        self.symbols: list[str] = []
        self.quoted: list[str] = []
        self.logins: list[int] = []
        self.trade_logins: list[int] = []

    def load(self) -> "Live":
        with self._lock:
            if not self._loaded:
                self._fetch()
                self._loaded = True
        return self

    def _fetch(self) -> None:
        s = requests.Session()
        s.trust_env = False  # a CA bundle named in the environment must not replace the service's CA
        s.verify = CA_CERT
        s.headers["X-SVC-APIKEY"] = API_KEY
        info = s.get(f"{BASE_URL}/v1/exchangeInfo", timeout=30).json()
        self.symbols = sorted(x["symbol"] for x in info["symbols"])
        prices = {x["symbol"] for x in s.get(f"{BASE_URL}/v1/ticker/price", timeout=30).json()}
        stats = {x["symbol"] for x in s.get(f"{BASE_URL}/v1/ticker/24hr", timeout=30).json()}
        self.quoted = sorted(prices & stats)
        accounts = signed_get(s, "/v1/accounts", {})
        self.logins = [a["login"] for a in accounts]
        self.trade_logins = [
            login for login in self.logins if signed_get(s, "/v1/account", {"login": str(login)})["tradeAllowed"]
        ]
        if not (self.symbols and self.quoted and self.logins and self.trade_logins):
            raise RuntimeError(f"service not ready: {self.__dict__}")


LIVE = Live()


def signed_get(s: requests.Session, path: str, params: dict[str, str]) -> Any:
    query = "&".join(f"{k}={v}" for k, v in {**params, "timestamp": str(now_ms())}.items())
    query += "&signature=" + sign(query)
    res = s.get(f"{BASE_URL}{path}?{query}", timeout=30)
    res.raise_for_status()
    return res.json()


def now_ms() -> int:
    return int(time.time() * 1000) + LEAD_MS


def sign(total_params: str) -> str:
    return hmac.new(API_SECRET, total_params.encode(), hashlib.sha256).hexdigest()


def _fresh_timestamp(part: str) -> str:
    """Sets every schema-valid timestamp segment of a raw parameter string to now (+ lead)."""
    out = []
    for seg in part.split("&") if part else []:
        name, eq, value = seg.partition("=")
        if name == "timestamp" and eq and DIGITS.match(value) and int(value) <= INT64_MAX:
            seg = f"timestamp={now_ms()}"
        out.append(seg)
    return "&".join(out)


def _take_signature(part: str) -> tuple[str, bool]:
    """Removes a well-formed signature segment; reports whether there was one. A malformed or
    missing signature stays as generated (a negative case)."""
    kept, found = [], False
    for seg in part.split("&") if part else []:
        name, _, value = seg.partition("=")
        if name == "signature":
            if HEX64.match(value):
                found = True
                continue
        kept.append(seg)
    return "&".join(kept), found


class Signer(requests.auth.AuthBase):
    """Signs the prepared request exactly as it goes on the wire."""

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        url = urlsplit(r.url)
        body = r.body.decode() if isinstance(r.body, bytes) else (r.body or "")
        query = _fresh_timestamp(url.query)
        body = _fresh_timestamp(body)
        query, in_query = _take_signature(query)
        body, in_body = _take_signature(body)
        if in_query or in_body:
            signature = "signature=" + sign(query + body)
            if in_body:
                body = f"{body}&{signature}" if body else signature
            else:
                query = f"{query}&{signature}" if query else signature
        r.url = urlunsplit((url.scheme, url.netloc, url.path, query, url.fragment))
        if r.body is not None:
            r.body = body
            r.headers["Content-Length"] = str(len(body.encode()))
        return r


SIGNER = Signer()


def _pick(value: Any, choices: list) -> Any:
    """A deterministic member of choices for value (the same generated value maps the same way)."""
    return choices[int(hashlib.sha256(repr(value).encode()).hexdigest(), 16) % len(choices)]


def _positive(case: Any, location: ParameterLocation) -> bool:
    meta = case.meta
    if meta is None:
        return False
    component = meta.components.get(location)
    if component is None:  # the examples phase records no components: the case's mode is theirs
        return meta.generation.mode.is_positive
    return component.mode.is_positive


def _as_int(value: Any) -> int | None:
    """The integer a generated value stands for: the coverage phase sends strings, fuzzing ints."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value):
        return int(value)
    return None


def _set_int(params: dict, name: str, value: int) -> None:
    params[name] = str(value) if isinstance(params[name], str) else value


def _fix_window(params: dict, op_id: str) -> None:
    start, end = _as_int(params.get("startTime")), _as_int(params.get("endTime"))
    if start is not None and end is not None and end < start:
        _set_int(params, "startTime", end)
        _set_int(params, "endTime", start)
        start, end = end, start
    if op_id not in ("allOrders", "userTrades"):
        return
    now = now_ms() - LEAD_MS
    if start is not None and end is not None:
        _set_int(params, "endTime", min(end, start + WEEK_MS))
    elif start is not None and not now - WEEK_MS + 60_000 < start <= now:
        _set_int(params, "startTime", now - (abs(start) % (WEEK_MS - 120_000)))


def _fix_data(params: dict, op_id: str, security: str) -> None:
    live = LIVE.load()
    symbol = params.get("symbol")
    if isinstance(symbol, str) and symbol:
        pool = live.quoted if op_id in ("tickerPrice", "bookTicker", "ticker24hr") else live.symbols
        if symbol not in pool:
            params["symbol"] = _pick(symbol, pool)
    if op_id == "exchangeInfo":
        names = params.get("symbols")
        encoded = isinstance(names, str)
        if encoded:
            names = json.loads(names)
        if isinstance(names, list):
            names = [n if n in live.symbols else _pick(n, live.symbols) for n in names]
            params["symbols"] = json.dumps(names) if encoded else names
        if params.get("symbol") and "symbols" in params:
            del params["symbols"]
    login = _as_int(params.get("login"))
    if login is not None:
        pool = live.trade_logins if security == "TRADE" else live.logins
        if login not in pool:
            _set_int(params, "login", _pick(login, pool))
    _fix_window(params, op_id)


def _fresh_client_order_id(params: Any) -> None:
    value = params.get("newClientOrderId") if isinstance(params, dict) else None
    if isinstance(value, str) and CLIENT_ORDER_ID.match(value):
        suffix = f"-{_run}-{next(_ids)}"
        params["newClientOrderId"] = value[: 36 - len(suffix)] + suffix


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    definition = case.operation.definition.raw
    security = definition.get("x-security-type", "NONE")
    op_id = definition.get("operationId", "")
    if security == "TRADE":
        _fresh_client_order_id(case.query)
        _fresh_client_order_id(case.body)
    if isinstance(case.query, dict) and _positive(case, ParameterLocation.QUERY):
        _fix_data(case.query, op_id, security)
    if isinstance(case.body, dict) and _positive(case, ParameterLocation.BODY):
        _fix_data(case.body, op_id, security)
    if security in SIGNED:
        kwargs["auth"] = SIGNER
