#!/usr/bin/env bash
# Regenerates the hayloft plugin protocol's Go code from its .proto files.
#
# The output must be byte-for-byte reproducible so CI can run this script and
# then `git diff --exit-code`: the generator versions are pinned below, and
# protoc's version (which the generated headers record) is checked rather than
# silently accepted.
set -euo pipefail

PROTOC_WANT="libprotoc 3.21.12"
GEN_GO_VERSION="v1.36.12"
GEN_GRPC_VERSION="v1.6.2"

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

if ! command -v protoc >/dev/null; then
	echo "gen-proto: protoc not found (Debian: apt-get install protobuf-compiler)" >&2
	exit 1
fi
if [[ "$(protoc --version)" != "$PROTOC_WANT" ]]; then
	echo "gen-proto: want $PROTOC_WANT, have $(protoc --version); the generated headers would change" >&2
	exit 1
fi

gobin="$(go env GOBIN)"
[[ -n "$gobin" ]] || gobin="$(go env GOPATH)/bin"

# ensure_tool NAME MODULE VERSION: install NAME@VERSION into $gobin unless the
# binary already reports that version (protoc-gen-go prints "v1.36.12",
# protoc-gen-go-grpc "1.6.2", so compare without the "v").
ensure_tool() {
	local name=$1 module=$2 version=$3
	local have
	have="$("$gobin/$name" --version 2>/dev/null || true)"
	if [[ "${have#"$name "}" == "$version" || "${have#"$name "}" == "${version#v}" ]]; then
		return
	fi
	echo "gen-proto: installing $module@$version" >&2
	GOBIN="$gobin" go install "$module@$version"
}
ensure_tool protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go "$GEN_GO_VERSION"
ensure_tool protoc-gen-go-grpc google.golang.org/grpc/cmd/protoc-gen-go-grpc "$GEN_GRPC_VERSION"

proto_root=sdk/plugin/proto
mapfile -t files < <(cd "$proto_root" && find . -name '*.proto' | sed 's|^\./||' | LC_ALL=C sort)

protoc \
	--plugin=protoc-gen-go="$gobin/protoc-gen-go" \
	--plugin=protoc-gen-go-grpc="$gobin/protoc-gen-go-grpc" \
	-I "$proto_root" \
	--go_out="$proto_root" --go_opt=paths=source_relative \
	--go-grpc_out="$proto_root" --go-grpc_opt=paths=source_relative \
	"${files[@]}"
