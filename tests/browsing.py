"""Helpers for the browser tests (the ``browser`` fixture is in ``tests/conftest.py``)."""

from __future__ import annotations

from typing import Any


def follow(driver: Any, element: Any) -> None:
    """Click a link or submit button and wait until the next page has replaced this one and
    finished loading.

    The old page is marked with a property on its ``window``, which a new document does not
    have. (Selenium's ``staleness_of`` asks the old ``<html>`` element instead, and Chromium
    may answer that with "Node with given id does not belong to the document", an error
    ``staleness_of`` does not expect.) Errors while the browser is between documents are
    retried until the deadline."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.support.ui import WebDriverWait

    driver.execute_script("window.__vfOldPage = true")
    element.click()
    WebDriverWait(driver, 30, ignored_exceptions=(WebDriverException,)).until(
        lambda d: d.execute_script(
            "return window.__vfOldPage === undefined && document.readyState === 'complete'"
        )
    )
