"""The results browser as a Starlette application (CONTRACT section 22).

Each page reads the store as it is at the request: a run that finishes while
the app is open appears on the next load. What never changes once written
is kept: a finished run's per-metric moments (for the trends) and a run's
labelling sample (drawn once per run, metric selection, size and seed).
Each label goes to the store at once; a run's labels are kept in a ledger
(``LabelLedger``) that a page load brings up to date (reading only label files it
has not read) and a label stored here joins as written, so storing a label costs
the same however many the run has. Where a person stopped is read back from the
store on every page load.

Requests are bounded: a query number past ``MAX_QUERY_NUMBER``, a label body over
``MAX_BODY_BYTES``, nested past ``json_limits``' depth, or slower than
``BODY_TIMEOUT_S`` is a 4xx, never a 500 (the server's own bounds on connections
are in ``server.py``).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from ragproof_core.calibration import DEFAULT_PER_METRIC, LabelQueue, judge_scores
from ragproof_core.compare import floors_for
from ragproof_core.json_limits import JsonLimitError, loads_bounded
from ragproof_core.metrics import stored_registry
from ragproof_core.present import (
    ORDERS,
    RUNS_PAGE,
    SORT_COLUMNS,
    STATUSES,
    TREND_RUNS,
    CaseNotFound,
    CaseQuery,
    LabelSession,
    MetricMoments,
    MixedJudgesError,
    app_content_security_policy,
    chosen_filters,
    compare_data,
    dataset_trends,
    gather_case,
    gather_report,
    label_page_data,
    label_tally,
    render_app_page,
    render_html,
    run_dict,
    run_moments,
    run_page_data,
    runs_page_data,
    search_cases,
    trend_page,
    verdict,
)
from ragproof_core.store import (
    InvalidRunId,
    LabelError,
    LabelLedger,
    RunNotFound,
    RunStore,
    StoredLabel,
)
from ragproof_serve.guard import SameOriginGuard, own_hosts

MAX_BODY_BYTES = 16_384  # a label is a few hundred bytes
BODY_TIMEOUT_S = 10.0  # a label's body arrives at once: a trickle holds a connection
MAX_QUERY_NUMBER = 2**31 - 1  # an offset, sample size or seed; DuckDB's and numpy's ints
HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class BadRequest(ValueError):
    """A request the app cannot serve: its message is shown to the person."""


@dataclass
class Browser:
    """The app's view of one store, with what it keeps of immutable things."""

    store: RunStore
    label: LabelSession | None = None  # ``ragproof label``'s own page, served at /

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._moments: dict[str, list[MetricMoments]] = {}
        self._queues: dict[tuple[str, str | None, int, int], LabelQueue] = {}
        self._ledgers: dict[str, LabelLedger] = {}

    def counts(self) -> dict[str, int]:
        """The finished runs of each dataset, from the catalog as it is at the request (one
        query, no run's record read): the pages' dataset lists and totals."""
        return self.store.dataset_counts()

    def warm(self) -> None:
        """Read the moments of the runs each dataset's first trend page shows, once,
        before the first page asks for them."""
        self.moments(
            [
                r.run_id
                for dataset in self.counts()
                for r in trend_page(self.store, dataset, limit=TREND_RUNS)[0]
            ]
        )

    def moments(self, run_ids: Sequence[str]) -> list[MetricMoments]:
        """Every metric's moments of each run; a finished run's are read only once."""
        with self._lock:
            missing = [r for r in run_ids if r not in self._moments]
        if missing:
            found: dict[str, list[MetricMoments]] = {r: [] for r in missing}
            for m in run_moments(self.store, missing):
                found[m.run_id].append(m)
            with self._lock:
                self._moments.update(found)
        with self._lock:
            return [m for r in run_ids for m in self._moments[r]]

    def labels(self, run_id: str) -> list[StoredLabel]:
        """The run's labels in force, brought up to date from the store (a page load)."""
        with self._lock:
            ledger = self._ledgers.setdefault(run_id, LabelLedger(self.store, run_id))
        return ledger.refresh()

    def stored(self, run_id: str, label_id: str, label: StoredLabel) -> list[StoredLabel]:
        """The run's labels in force once ``label``, just stored, joins them: no read."""
        with self._lock:
            ledger = self._ledgers.get(run_id)
        if ledger is None:  # the first label of a run no page has shown
            return self.labels(run_id)
        return ledger.add(label_id, label)

    def queue(self, session: LabelSession) -> LabelQueue:
        key = (session.run_id, session.metric, session.per_metric, session.seed)
        with self._lock:
            queue = self._queues.get(key)
        if queue is None:
            queue = LabelQueue.load(
                self.store,
                session.run_id,
                metric=session.metric,
                per_metric=session.per_metric,
                seed=session.seed,
            )
            with self._lock:
                self._queues[key] = queue
        return queue


def page(name: str, title: str, data: dict[str, Any], store: RunStore, status: int = 200):
    body = render_app_page(name, title, {"store": store.layout.location, **data})
    return HTMLResponse(
        body,
        status_code=status,
        headers={
            **HEADERS,
            "Content-Security-Policy": app_content_security_policy() + "; frame-ancestors 'none'",
        },
    )


def problem(store: RunStore, title: str, message: str, status: int) -> HTMLResponse:
    return page("problem", title, {"title": title, "message": message}, store, status)


def _int(value: str | None, name: str, default: int, minimum: int = 0) -> int:
    if value is None or value == "":
        return default
    text = value.strip()
    if not (text.removeprefix("-").isascii() and text.removeprefix("-").isdigit()):
        raise BadRequest(f"{name} must be a whole number, got {value[:40]!r}")
    if len(text) > len(str(MAX_QUERY_NUMBER)) or int(text) > MAX_QUERY_NUMBER:
        raise BadRequest(f"{name} must be at most {MAX_QUERY_NUMBER}")
    number = int(text)
    if number < minimum:
        raise BadRequest(f"{name} must be at least {minimum}, got {number}")
    return number


def _read_json(raw: bytes) -> dict[str, Any]:
    try:
        body = loads_bounded(raw.decode("utf-8"))
    except JsonLimitError as exc:  # nested thousands deep, a NaN: a 400, not a 500
        raise BadRequest(f"the body must be a JSON object: {exc}") from None
    except ValueError:  # not UTF-8, not JSON
        raise BadRequest("the body must be a JSON object") from None
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    return body


def _field(body: dict[str, Any], name: str, kind: type) -> Any:
    value = body.get(name)
    if not isinstance(value, kind) or value == "":
        raise BadRequest(f"{name} is missing or not a {kind.__name__}")
    return value


def build_app(browser: Browser, port: int) -> Starlette:
    """The app for ``browser``'s store, answering as 127.0.0.1:``port`` only."""
    store = browser.store

    def shown(handler: Callable[[Request], Response]) -> Callable[[Request], Response]:
        """A page handler whose bad input is a page saying so (404 or 400), not a 500.
        Sync handlers: Starlette runs them in its thread pool, off the event loop."""

        def run(request: Request) -> Response:
            try:
                return handler(request)
            except (RunNotFound, InvalidRunId) as exc:
                return problem(store, "No such run", str(exc).strip("'\""), 404)
            except CaseNotFound as exc:
                return problem(store, "No such case", str(exc), 404)
            except (BadRequest, LabelError) as exc:
                return problem(store, "Cannot show this", str(exc), 400)

        return run

    def runs_page(request: Request) -> Response:
        offset = _int(request.query_params.get("offset"), "offset", 0)
        # The page's runs and the counts from the catalog: no other run's record read;
        # its filters (?dataset=, ?tag=KEY=VALUE, ...) applied in the catalog's query.
        filters = chosen_filters(request.query_params)
        data = runs_page_data(store, offset=offset, limit=RUNS_PAGE, filters=filters)
        return page("runs", "ragproof runs", data, store)

    def home(request: Request) -> Response:
        if browser.label is not None:
            return label_page(request, browser.label)
        return runs_page(request)

    def run_page(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        data = run_page_data(store, run_id)
        labels = browser.labels(run_id)
        if labels:
            judged = judge_scores(store.case_results_frame(run_id))
            data["labels"] = {row["metric"]: row for row in label_tally(judged, labels)}
        return page("run", f"ragproof run {run_id}", data, store)

    def report(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        against = request.query_params.get("against") or None
        allow = request.query_params.get("allow_mixed_judges") == "1"
        try:
            data = gather_report(store, run_id, against=against, allow_mixed_judges=allow)
        except MixedJudgesError as exc:
            return problem(store, "Not compared", str(exc), 409)
        return HTMLResponse(render_html(data), headers=HEADERS)

    def trends(request: Request) -> Response:
        offset = _int(request.query_params.get("offset"), "offset", 0)
        dataset = request.query_params.get("dataset") or min(browser.counts(), default="")
        # The newest runs of the dataset, a page at a time, read from the catalog as the
        # page shows them with the datasets counted: a year of runs reads no more.
        runs, window, counts = trend_page(store, dataset, offset, TREND_RUNS)
        names = sorted(counts)
        if names and dataset not in names:
            raise BadRequest(f"no stored run of dataset {dataset!r}")
        registry = stored_registry(*(r.config_json for r in runs[-1:]))
        data = dataset_trends(dataset, runs, browser.moments([r.run_id for r in runs]), registry)
        data["datasets"] = names
        data["window"] = window
        return page("trends", f"ragproof trends: {dataset}", data, store)

    def compare(request: Request) -> Response:
        a, b = request.query_params.get("a"), request.query_params.get("b")
        if not a or not b:
            raise BadRequest("name two runs: /compare?a=BASELINE&b=RUN")
        allow = request.query_params.get("allow_mixed") == "1"
        data = compare_data(store, a, b, allow_mixed=allow)
        data["datasets"] = sorted(browser.counts())
        return page("compare", f"ragproof compare {a} {b}", data, store)

    def cases(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        params = request.query_params
        status = params.get("status", "")
        if status and status not in STATUSES:
            raise BadRequest(f"status must be one of {', '.join(STATUSES)}, got {status!r}")
        order = params.get("order") or "asc"
        if order not in ORDERS:
            raise BadRequest(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
        record = store.get_run(run_id)
        registry = stored_registry(record.config_json)
        sort = params.get("sort", "")
        if sort not in SORT_COLUMNS and registry.spec(sort) is None:
            raise BadRequest(f"cannot sort by {sort!r}: name a metric, case or kind")
        query = CaseQuery(
            text=params.get("q", ""),
            metric=params.get("metric", ""),
            status=status,
            offset=_int(params.get("offset"), "offset", 0),
            sort=sort,
            order=order,
            failing=params.get("failing") == "1",
        )
        floors = floors_for(store, run_id)
        data = search_cases(store, run_id, query, floors, registry)
        data["run"] = run_dict(record)
        data["run_id"] = run_id
        data["all_metrics"] = params.get("all_metrics") == "1"
        return page("cases", f"ragproof cases of {run_id}", data, store)

    def case(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        case_id = request.query_params.get("id")
        if not case_id:
            raise BadRequest(f"name a case: /runs/{run_id}/case?id=CASE_ID")
        data = gather_case(store, run_id, case_id)
        record = store.get_run(run_id)
        registry = stored_registry(record.config_json)
        data["directions"] = {
            row["metric"]: registry.higher_is_better(row["metric"])
            for row in data["case"]["results"]
        }
        data["bounded"] = {
            row["metric"]: registry.bounded(row["metric"]) for row in data["case"]["results"]
        }
        data["floors"] = {f.metric: {"min": f.min, "max": f.max} for f in floors_for(store, run_id)}
        return page("case", f"ragproof case {case_id} of {run_id}", data, store)

    def session_of(request: Request, run_id: str) -> LabelSession:
        params = request.query_params
        base = browser.label if browser.label and browser.label.run_id == run_id else None
        default = base or LabelSession(run_id, None, DEFAULT_PER_METRIC, 0, "annotator")
        return LabelSession(
            run_id,
            params.get("metric") or default.metric,
            _int(params.get("sample"), "sample", default.per_metric, 1),
            _int(params.get("seed"), "seed", default.seed),
            params.get("annotator") or default.annotator,
        )

    def label_page(request: Request, session: LabelSession | None = None) -> Response:
        session = session or session_of(request, request.path_params["run_id"])
        queue = browser.queue(session)
        state = queue.state(store, session.annotator)
        data = label_page_data(session, queue, state, browser.labels(session.run_id))
        return page("label", f"ragproof label {session.run_id}", data, store)

    def store_label(raw: bytes) -> Response:
        body = _read_json(raw)
        run_id = _field(body, "run_id", str)
        session = LabelSession(
            run_id,
            body.get("metric_filter") or None,
            _int(str(body.get("sample", "")), "sample", DEFAULT_PER_METRIC, 1),
            _int(str(body.get("seed", "")), "seed", 0),
            _field(body, "annotator", str),
        )
        queue = browser.queue(session)
        item = queue.item(_field(body, "case_id", str), _field(body, "metric", str))
        if item is None:
            raise BadRequest("that case is not in this labelling sample")
        label_id, label = queue.record(
            store, item.case_id, item.metric, body.get("score"), session.annotator
        )
        return JSONResponse(
            {
                **verdict(item, label.score),
                "tally": label_tally(queue.judged, browser.stored(run_id, label_id, label)),
            },
            headers=HEADERS,
        )

    async def read_body(request: Request) -> bytes | Response:
        raw = b""
        async for chunk in request.stream():
            raw += chunk
            if len(raw) > MAX_BODY_BYTES:  # read no further than a label can be long
                return JSONResponse({"error": "request too large"}, status_code=413)
        return raw

    async def post_label(request: Request) -> Response:
        try:
            raw = await asyncio.wait_for(read_body(request), BODY_TIMEOUT_S)
        except TimeoutError:
            return JSONResponse({"error": "the body took too long"}, status_code=408)
        if isinstance(raw, Response):
            return raw
        try:
            return await run_in_threadpool(store_label, raw)
        except (BadRequest, LabelError, RunNotFound, InvalidRunId) as exc:
            return JSONResponse({"error": str(exc).strip("'\"")}, status_code=400)

    routes = [
        Route("/", shown(home)),
        Route("/runs", shown(runs_page)),
        Route("/runs/{run_id}", shown(run_page)),
        Route("/runs/{run_id}/report", shown(report)),
        Route("/runs/{run_id}/cases", shown(cases)),
        Route("/runs/{run_id}/case", shown(case)),
        Route("/trends", shown(trends)),
        Route("/compare", shown(compare)),
        Route("/label/{run_id}", shown(label_page)),
        Route("/api/labels", post_label, methods=["POST"]),
    ]
    return Starlette(routes=routes, middleware=[Middleware(SameOriginGuard, hosts=own_hosts(port))])
