module archive.is-bomb

go 1.19

require (
	github.com/cespare/xxhash v0.0.0
	github.com/klauspost/compress v0.0.0
	github.com/ulikunitz/xz v0.0.0
	lockd/sdk v0.0.0
)

replace lockd/sdk => ../../../client/go

// Debian's golang-github-ulikunitz-xz-dev and golang-github-klauspost-compress-dev (with the
// golang-github-cespare-xxhash-dev it imports), installed by scripts/deps: built offline from
// their source.
replace (
	github.com/cespare/xxhash => /usr/share/gocode/src/github.com/cespare/xxhash
	github.com/klauspost/compress => /usr/share/gocode/src/github.com/klauspost/compress
	github.com/ulikunitz/xz => /usr/share/gocode/src/github.com/ulikunitz/xz
)
