#!/usr/bin/env bash
# slim_tree.sh off: take the large test data out of the index (ignored meanwhile) so a device
# call's upload stays small; slim_tree.sh on: put it back. Nothing in the work tree changes.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
paths=(tests/data/reference/tiny tests/data/reference/more_families tests/data/reference/gte
  tests/data/reference/nomic tests/data/reference/jina tests/data/fuzz tests/data/tiny_bin
  tests/data/fast_tokenizer_refs.json tests/data/fast_tokenizer_refs_more.json
  docs/report.png docs/report_alignment.png)
exclude=.git/info/exclude
mkdir -p .git/info && touch "$exclude"
case "${1:-}" in
  off)
    git rm -r -q --cached "${paths[@]}"
    { echo "# slim_tree begin"; printf '/%s\n' "${paths[@]}"; echo "# slim_tree end"; } >> "$exclude"
    git ls-files -z | xargs -0 du -cb | tail -1 ;;
  on)
    git reset -q -- "${paths[@]}"
    sed -i '/^# slim_tree begin$/,/^# slim_tree end$/d' "$exclude"
    git status --short | head ;;
  *) echo "usage: $0 off|on" >&2; exit 2 ;;
esac
