#!/bin/sh
# The hostile inputs, too large to commit: 100 000 pages, a page tree that loops, a content
# stream that inflates to 1 GiB (pdf-common/fixtures.py --hostile), into OUT/one, zero, error.
# usage: make-fixtures.sh OUT
set -eu
exec python3 "$(dirname "$0")/../pdf-common/fixtures.py" pdf.contains "$1" --hostile
