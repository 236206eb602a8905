# Sourced by the dev-set builders. `refuse_reserved TOOL NAME` exits when NAME (a package,
# a folder, a Debian source package, a repository name) is reserved by
# ../shared/eval/RESERVED.txt. Every entry form there counts, case-insensitively:
#   a package name (`rxjs`, `requests`, `tokio`)      NAME starts with it, or holds it as a
#                                                      whole word (`python-requests`,
#                                                      `rust-tokio`, `rxjs-compat`)
#   an npm scope (`@hono/`)                            the scope's name, the same way
#   a repository path (`github.com/spf13/cobra`)       the path, or its last element
#                                                      (`golang-github-spf13-cobra`)
#   a Java group id (`com.google.code.gson`)           the group, or its last element
#                                                      (`google-gson`, `gson`)
#   a Maven coordinate (`org.apache.commons:commons-lang3`)
#                                                      the coordinate, or the artifact
#                                                      (`libcommons-lang3-java`)
# A word is delimited by the start or end of NAME (after a Debian `lib` prefix too) or one
# of - _ . / @ : + (and a digit after it: `rxjs7`).
refuse_reserved() {
  local tool=$1 name list reserved key
  name=$(printf '%s' "$2" | tr '[:upper:]' '[:lower:]')
  list="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/shared/eval/RESERVED.txt"
  [ -f "$list" ] || { echo "$tool: $list is missing: the reserved list must be read first" >&2; exit 1; }
  while read -r reserved; do
    case "$reserved" in ''|'#'*) continue;; esac
    reserved=$(printf '%s' "$reserved" | tr '[:upper:]' '[:lower:]')
    local keys=("$reserved")
    case "$reserved" in
      */*[!/]) keys+=("${reserved##*/}");;
      *:*) keys+=("${reserved##*:}");;
      *.*) keys+=("${reserved##*.}");;
    esac
    for key in "${keys[@]}"; do
      key=${key%/}
      key=${key#@}
      if [[ "$name" == "$key"* || "$name" =~ (^|^lib|[-_./@:+])"$key"($|[-_./@:+0-9]) ]]; then
        echo "$tool: $2 is reserved for evaluation ($reserved in $list)" >&2
        exit 1
      fi
    done
  done < "$list"
}
