# Sourced by the dev-set builders. `refuse_reserved TOOL NAME` exits when NAME is reserved
# by ../shared/eval/RESERVED.txt: it starts with an entry (a package that bundles or copies
# one is reserved too; an npm scope `@x/` covers its packages), or, for an entry that is a
# repository path (`github.com/spf13/cobra`), with the path's last element.
refuse_reserved() {
  local tool=$1 name=$2 list reserved base
  list="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/shared/eval/RESERVED.txt"
  while read -r reserved; do
    case "$reserved" in ''|'#'*) continue;; esac
    base=$reserved
    case "$reserved" in */*[!/]) base=${reserved##*/};; esac
    case "$name" in
      "$reserved"*|"$base"*)
        echo "$tool: $name is reserved for evaluation ($reserved in $list)" >&2
        exit 1;;
    esac
  done < "$list"
}
