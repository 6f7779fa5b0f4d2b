#!/bin/sh
# Install Debian's chromium for the browser tests (tests/test_html_browser.py), only when missing.
# Playwright drives this binary; its own browser download is never used.
set -eu
if [ -x /usr/bin/chromium ]; then
    exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
$SUDO apt-get update
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends chromium
