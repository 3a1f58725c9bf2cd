module image.decodes-fully

go 1.19

require (
	lockd/marketplace v0.0.0
	lockd/sdk v0.0.0
)

replace lockd/sdk => ../../../client/go

// The code the official plugins share (marketplace/go).
replace lockd/marketplace => ../../go

// Debian's golang-github-ulikunitz-xz-dev (scripts/deps), which lockd/marketplace's decompress
// package needs: built offline from its source.
replace github.com/ulikunitz/xz => /usr/share/gocode/src/github.com/ulikunitz/xz
