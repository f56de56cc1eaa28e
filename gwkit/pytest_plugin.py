"""gwkit's pytest plugin: a sandbox gateway and a client for every test, and faults by marker.

Installed with gwkit, it loads by itself (entry point `pytest11`); `pytest -p gwkit.pytest_plugin`
names it explicitly. Fixtures:

- `gwkit_sandbox`: an in-process sandbox (a SQLite file, no server, no socket) in the state a
  fresh sandbox has. By default each test gets its own. With `gwkit_sandbox_scope = session` in
  the ini file (or `--gwkit-sandbox-scope=session`), one sandbox serves the whole session and a
  snapshot of its starting state is restored before each test: much faster for large suites,
  the same isolation. Override the fixture `gwkit_scenario` to return a function
  `setup(sandbox)` that fills the state every test starts from (run once per sandbox).
- `gwkit_client`: a `gwkit.Client` talking to it through an in-process transport, with the
  sandbox's default credentials and site reference.
- `gwkit_notifications`: a URL notification listener on a loopback port (`gwkit.NotificationListener`,
  password `gwkit_notification_password`) and an online rule of `gwkit_sandbox`'s site that
  notifies it, so a notification has arrived when the payment's answer has:

      def test_my_payment_is_notified(gwkit_client, gwkit_notifications):
          record = gwkit_client.auth(...).record
          gwkit_notifications.assert_notified_once(record["transactionreference"])  # once, signed

- `gwkit_checklist` (one for the session): the checklist (docs/checklist.md) in front of a sandbox
  of its own; point your shop's gateway base URL at `gwkit_checklist.base_url`, and claim each step
  around the payment that exercises it:

      def test_my_shop_handles_a_decline(gwkit_checklist, my_shop):
          with gwkit_checklist.step("decline") as step:
              my_shop.pay(...)
          assert step.verdict.passed, step.verdict.explain()

  With `--gwkit-checklist-report DIR` its JUnit XML and HTML reports are written there at the end.

The marker `@pytest.mark.gwkit_faults(kind="gateway_error", code=60010, made=True)` adds a fault
(any kind of `docs/sandbox.md`, with its parameters and selector) before the test; stack several
markers for several faults. The older `@pytest.mark.gwkit_faults(drop_next=1, process=True)` still
works, deprecated (a DeprecationWarning): `kind="drop", count=1, process=True` instead.

    def test_my_checkout_reconciles_a_lost_answer(gwkit_client):
        ...
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .client import Client
from .journal import Journal
from .notifications import NotificationListener

if TYPE_CHECKING:
    from .checklist import ChecklistHandle

try:
    from .sandbox import DEFAULT_ACCOUNT, Sandbox, SandboxTransport
except ImportError:  # gwkit without the [sandbox] extra: the plugin loads, its fixtures skip
    Sandbox = None  # type: ignore[assignment,misc]

MARKER = "gwkit_faults"
SCOPES = ("test", "session")
BASELINE = "gwkit-pytest-baseline"


def pytest_addoption(parser: pytest.Parser) -> None:
    help_text = "one fresh gwkit sandbox per test (test), or one per session restored per test (session)"
    parser.addini("gwkit_sandbox_scope", help_text, default="test")
    parser.addoption("--gwkit-sandbox-scope", choices=SCOPES, default=None, help=help_text)
    parser.addoption(
        "--gwkit-checklist-report",
        default=None,
        metavar="DIR",
        help="write gwkit_checklist's reports (checklist.xml, checklist.html) to this folder",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(kind=..., **params): inject a fault into gwkit_sandbox before the "
        "test; drop_next=N, process=True is the older form (deprecated)",
    )


def _scope(config: pytest.Config) -> str:
    scope = config.getoption("--gwkit-sandbox-scope") or config.getini("gwkit_sandbox_scope")
    if scope not in SCOPES:
        raise pytest.UsageError(f"gwkit_sandbox_scope must be one of {', '.join(SCOPES)}, got {scope!r}")
    return scope


def _require_sandbox() -> None:
    if Sandbox is None:
        pytest.skip("gwkit's sandbox is not installed: pip install 'gwkit[sandbox]'")


@pytest.fixture
def gwkit_scenario() -> Callable[[Sandbox], None] | None:
    """Override to return `setup(sandbox)`, which fills the state every test starts from."""
    return None


@pytest.fixture(scope="session")
def _gwkit_session_sandbox(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Sandbox | None]:
    if _scope(request.config) != "session" or Sandbox is None:
        yield None
        return
    sandbox = Sandbox(tmp_path_factory.mktemp("gwkit-session") / "sandbox.db")
    yield sandbox
    sandbox.close()


@pytest.fixture
def gwkit_sandbox(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    _gwkit_session_sandbox: Sandbox | None,
) -> Iterator[Sandbox]:
    _require_sandbox()
    shared = _gwkit_session_sandbox
    if shared is None:
        sandbox = Sandbox(tmp_path_factory.mktemp("gwkit") / "sandbox.db")
        _prepare(request, sandbox)
        _inject(request, sandbox)
        yield sandbox
        sandbox.close()
        return
    if not any(s["name"] == BASELINE for s in shared.snapshots.list()):
        _prepare(request, shared)
        shared.snapshots.save(BASELINE)
    shared.snapshots.restore(BASELINE)
    _inject(request, shared)
    yield shared
    shared.faults.clear()


def _prepare(request: pytest.FixtureRequest, sandbox: Sandbox) -> None:
    setup = request.getfixturevalue("gwkit_scenario")
    if setup is not None:
        setup(sandbox)


def _inject(request: pytest.FixtureRequest, sandbox: Sandbox) -> None:
    for marker in reversed(list(request.node.iter_markers(MARKER))):  # outermost first
        if marker.args:
            raise pytest.UsageError(
                f"@pytest.mark.{MARKER} takes keyword arguments only, e.g. kind='drop', process=True"
            )
        params: dict[str, Any] = dict(marker.kwargs)
        if "kind" in params:
            sandbox.faults.add(params.pop("kind"), **params)
        else:
            sandbox.faults.set(**params)  # deprecated: warns


@pytest.fixture
def gwkit_client(gwkit_sandbox: Sandbox) -> Iterator[Client]:
    account = DEFAULT_ACCOUNT
    with Client(
        "http://gwkit-sandbox.invalid",
        account.username,
        account.password,
        sitereference=account.sitereferences[0],
        transport=SandboxTransport(gwkit_sandbox),
    ) as client:
        yield client


@pytest.fixture
def gwkit_notification_password() -> str:
    """The notification password of `gwkit_notifications`' rule (override to choose another)."""
    return "gwkit-notification-password"


@pytest.fixture
def gwkit_notifications(
    gwkit_sandbox: Sandbox, gwkit_notification_password: str
) -> Iterator[NotificationListener]:
    """A listener, and an online rule on the sandbox's first site that notifies it (all fields by
    default, signed with `gwkit_notification_password`); the rule is removed after the test."""
    with NotificationListener(password=gwkit_notification_password) as listener:
        notifier = gwkit_sandbox.gateway.notifier
        site = gwkit_sandbox.default_account.sitereferences[0]
        rule = notifier.add_rule(
            {"url": listener.url, "password": gwkit_notification_password, "flow": "online"}, site
        )
        yield listener
        notifier.delete_rule([site], rule["id"])


@pytest.fixture(scope="session")
def gwkit_checklist(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ChecklistHandle]:
    """The checklist on a loopback port, in front of a sandbox of its own, for the session."""
    _require_sandbox()
    # Imported here: the proxy brings pandas (its drift report), and this plugin loads in every pytest run.
    from . import checklist, proxy

    folder = tmp_path_factory.mktemp("gwkit-checklist")
    report = request.config.getoption("--gwkit-checklist-report")
    folder_of_reports = (
        checklist.reports.check_writable(Path(report) / "checklist.xml").parent if report else None
    )
    sandbox = Sandbox(folder / "sandbox.db")
    handle = checklist.start(proxy.SandboxUpstream(sandbox), journal=Journal(folder / "journal.db"))
    try:
        yield handle
        result = handle.finish()
        if folder_of_reports is not None:
            checklist.write_reports(
                result, junit=folder_of_reports / "checklist.xml", html=folder_of_reports / "checklist.html"
            )
    finally:
        handle.stop()
        sandbox.close()
