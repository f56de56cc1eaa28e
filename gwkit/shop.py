"""A customer at the sandbox's demo shop, whose payment page uses st.js (interface 4.6).

`DemoShop(base_url, sitereference)` is the shop at `{base_url}/demo/merchant`:

- `shop.page()` shows the page itself in the notebook, as tall as the page really is, with links
  to open it (and its French and German versions) in a tab;
- `shop.form_source()` is the payment form's HTML as the shop wrote it;
- `shop.pay(card)` plays the customer: with Playwright and a Chromium it opens the page headless,
  types the card and presses Pay, and keeps screenshots at the page's real size (card number and
  security code drawn as dots); without them it sends exactly what st.js would send, and says so;
- `shop.receipts()` / `shop.last_receipt()` are what the shop's server received.

The card is only ever typed into the page or sent to the gateway's `/json/`, as st.js does; nothing
here keeps it.
"""

from __future__ import annotations

import atexit
import base64
import concurrent.futures
import html
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

DEFAULT_CHROMIUM = "/usr/bin/chromium"
# Without the background-networking flags Chromium tries to reach Google's hosts at every start.
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
# Short: a full-page screenshot is as tall as the page's content, never padded to the window.
VIEWPORT = {"width": 900, "height": 120}
# Screenshots never show card data in clear: Chromium draws these inputs as dots. (Set through the
# DOM, which the page's Content-Security-Policy allows, unlike an added <style>.)
HIDE_CARD_DATA = (
    "document.querySelectorAll('[data-st-field=pan], [data-st-field=securitycode]')"
    ".forEach(input => input.style.webkitTextSecurity = 'disc')"
)
# The same, on every document the shop's page loads (before its first paint), with no call per payment.
HIDE_CARD_DATA_ON_LOAD = f"document.addEventListener('DOMContentLoaded', () => {HIDE_CARD_DATA})"
RESULT = "#auth-result, #st-message.st-error"  # the shop's answer, or st.js's refusal
ORDER = {
    "orderreference": "demo-order-1",
    "baseamount": "1050",
    "currencyiso3a": "GBP",
    "billinglastname": "Tester",
}
LOCALES = ("fr_fr", "de_de")
_TIMEOUT = 30.0


def chromium_path() -> Path | None:
    """The Chromium to drive: `GWKIT_CHROMIUM`, else Debian's `/usr/bin/chromium`; None when absent."""
    path = Path(os.environ.get("GWKIT_CHROMIUM", DEFAULT_CHROMIUM))
    return path if path.exists() else None


def browser_available() -> bool:
    """Can a headless browser play the customer here (Playwright installed, a Chromium on disk)?"""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return False
    return chromium_path() is not None


@dataclass
class Screenshot:
    caption: str
    png: bytes

    def _repr_html_(self) -> str:
        data = base64.b64encode(self.png).decode("ascii")
        return (
            f'<figure style="margin:0 0 1em 0"><figcaption style="font-weight:600">'
            f"{html.escape(self.caption)}</figcaption>"
            f'<img src="data:image/png;base64,{data}" alt="{html.escape(self.caption)}" '
            f'style="max-width:100%;border:1px solid #ccc"></figure>'
        )


@dataclass
class Payment:
    """One payment on the shop page: how it was made, its screenshots, what the page said."""

    via: str  # "browser" or "st.js emulation"
    screenshots: list[Screenshot] = field(default_factory=list)
    page_message: str = ""  # st.js's message or the shop's result, as the page showed it

    def _repr_html_(self) -> str:
        how = (
            "Paid in headless Chromium, as a customer would: typed the card and pressed Pay."
            if self.via == "browser"
            else "Playwright or Chromium is not installed here: sent what st.js would send instead "
            "(CACHETOKENISE from the browser, then the form without card inputs)."
        )
        parts = [f"<p>{html.escape(how)}</p>"]
        if self.page_message:
            parts.append(f"<p>The page said: <em>{html.escape(self.page_message)}</em></p>")
        parts += [shot._repr_html_() for shot in self.screenshots]
        return "".join(parts)


class ShopPage:
    """The shop's page shown in a notebook: links, and the page in a frame as tall as its content."""

    def __init__(self, url: str, height: int | None):
        self.url = url
        self.height = height

    def _repr_html_(self) -> str:
        links = " &middot; ".join(
            [f'<a href="{html.escape(self.url)}" target="_blank">Open the demo shop in a new tab</a>']
            + [f'<a href="{html.escape(self.url)}?locale={loc}" target="_blank">{loc}</a>' for loc in LOCALES]
        )
        if self.height is None:
            return f"<p>{links}</p>"
        return (
            f'<p>{links}</p><iframe src="{html.escape(self.url)}" title="The demo shop\'s payment page" '
            f'style="width:100%;max-width:{VIEWPORT["width"]}px;height:{self.height}px;'
            f'border:1px solid #ccc"></iframe>'
        )


class DemoShop:
    def __init__(self, base_url: str, sitereference: str, *, chromium: str | os.PathLike[str] | None = None):
        self.base_url = base_url.rstrip("/")
        self.sitereference = sitereference
        self.chromium = Path(chromium) if chromium else chromium_path()
        self.url = f"{self.base_url}/demo/merchant"
        self._browser: _BrowserThread | None = None

    def __repr__(self) -> str:
        return f"<DemoShop {self.url} site {self.sitereference}>"

    def page_url(self, *, named_card_inputs: bool = False, locale: str | None = None) -> str:
        query = [f"locale={locale}"] if locale else []
        query += ["named_card_inputs=1"] if named_card_inputs else []
        return self.url + ("?" + "&".join(query) if query else "")

    def page(self) -> ShopPage:
        """The page, to pay on by hand: in a frame sized to the page when a browser can measure it."""
        height = self._in_browser(_page_height, self.url) if self._can_drive() else None
        return ShopPage(self.url, height)

    def form_source(self) -> str:
        """The payment form and the st.js set-up, as the shop's HTML has them."""
        page = httpx.get(self.url, timeout=_TIMEOUT).text
        form = page[page.index("<form") :]
        end = form.index("</script>", form.index("SecureTrading.Standard")) + len("</script>")
        return form[:end]

    def pay(
        self, card: Mapping[str, str], *, complete: str = "later", named_card_inputs: bool = False
    ) -> Payment:
        """Pay on the page with `card` (pan, expirymonth, expiryyear, securitycode).

        `complete="later"`: the shop keeps the token and sends no AUTH (send it yourself);
        `"now"`: the shop's server sends the AUTH at once. `named_card_inputs` uses the page whose
        card inputs carry a `name`, the mistake that posts card data to the shop."""
        url = self.page_url(named_card_inputs=named_card_inputs)
        if self._can_drive():
            return self._in_browser(_pay_on_page, url, dict(card), complete)
        return self._pay_like_stjs(card, complete, named_card_inputs)

    def receipts(self) -> list[dict[str, Any]]:
        """What the shop's server received, oldest first (card data masked by the recorder)."""
        answer = httpx.get(f"{self.url}/received", timeout=_TIMEOUT)
        answer.raise_for_status()
        return answer.json()["receipts"]

    def last_receipt(self) -> dict[str, Any]:
        receipts = self.receipts()
        if not receipts:
            raise LookupError("the demo shop has received nothing yet: pay on its page first")
        return receipts[-1]

    def _can_drive(self) -> bool:
        return self.chromium is not None and self.chromium.exists() and browser_available()

    def _in_browser(self, work: Callable[..., Any], *args: Any) -> Any:
        """Run `work(page, *args)` on the page of this shop's headless Chromium (both started at the
        first use and kept until `close()`)."""
        if self.chromium is None:
            raise RuntimeError("no Chromium to drive (set GWKIT_CHROMIUM)")
        if self._browser is None:
            self._browser = _BrowserThread(self.chromium)
        return self._browser.run(work, *args)

    def close(self) -> None:
        """Stop the headless browser, if one was started (also done when the interpreter exits)."""
        if self._browser is not None:
            self._browser.close()
            self._browser = None

    def _pay_like_stjs(self, card: Mapping[str, str], complete: str, named_card_inputs: bool) -> Payment:
        envelope = {
            "version": "1.00",
            "request": [
                {"requesttypedescriptions": ["CACHETOKENISE"], "sitereference": self.sitereference, **card}
            ],
        }
        record = httpx.post(f"{self.base_url}/json/", json=envelope, timeout=_TIMEOUT).json()["response"][0]
        if record["errorcode"] != "0":
            return Payment(
                "st.js emulation", page_message=f"{record.get('errormessage')} {record.get('errordata', '')}"
            )
        form = {
            "sitereference": self.sitereference,
            **ORDER,
            "complete": complete,
            "cachetoken": record["cachetoken"],
        }
        if named_card_inputs:
            form.update(card)
        httpx.post(f"{self.url}/pay", data=form, timeout=_TIMEOUT)
        return Payment("st.js emulation")


class _BrowserThread:
    """One headless Chromium and one page of it, driven from one thread of its own: Playwright's sync
    API belongs to the thread that started it, and refuses a thread with an event loop (a notebook's).

    The page is kept between uses (a new one costs more than a payment's other steps together); each
    use starts with a `goto`, and a use that fails drops the page, so the next one starts clean."""

    def __init__(self, chromium: Path):
        self._chromium = chromium
        self._thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="gwkit-shop-browser")
        self._playwright: Any = None
        self._browser: Any = None
        self._page: Any = None
        atexit.register(self.close)

    def run(self, work, *args: Any) -> Any:
        return self._thread.submit(self._on_page, work, args).result()

    def _on_page(self, work, args: tuple[Any, ...]) -> Any:
        page = self._page or self._new_page()
        try:
            return work(page, *args)
        except BaseException:
            self._page = None
            page.close()
            raise

    def _new_page(self) -> Any:
        if self._browser is None:
            from playwright.sync_api import sync_playwright

            self._playwright = sync_playwright().start()
            self._browser = self._playwright.chromium.launch(
                executable_path=str(self._chromium), args=list(CHROMIUM_ARGS)
            )
        self._page = self._browser.new_page(viewport=VIEWPORT)
        self._page.add_init_script(HIDE_CARD_DATA_ON_LOAD)
        return self._page

    def close(self) -> None:
        atexit.unregister(self.close)
        try:
            self._thread.submit(self._stop).result()
        except RuntimeError:  # the interpreter is exiting: its executors take no more work
            pass
        self._thread.shutdown(wait=True)

    def _stop(self) -> None:
        if self._browser is not None:
            self._browser.close()
            self._playwright.stop()
            self._browser = self._playwright = self._page = None


def _page_height(page, url: str) -> int:
    page.goto(url)
    return int(page.evaluate("document.documentElement.scrollHeight")) + 4


def _pay_on_page(page, url: str, card: dict[str, str], complete: str) -> Payment:
    page.goto(url)  # the card inputs are drawn as dots from the start (HIDE_CARD_DATA_ON_LOAD)
    for name, value in card.items():
        page.fill(f"[data-st-field={name}]", value)
    page.select_option("select[name=complete]", complete)
    before = Screenshot("The page with the card typed in, before Pay", page.screenshot(full_page=True))
    page.click("#pay")
    message = page.locator(RESULT).first.inner_text().strip()  # waits for the answer to show
    after = Screenshot("After Pay: what the page shows", page.screenshot(full_page=True))
    return Payment("browser", [before, after], message)
