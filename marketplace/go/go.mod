module lockd/marketplace

go 1.19

require github.com/ulikunitz/xz v0.0.0

// Debian's golang-github-ulikunitz-xz-dev, installed by scripts/deps: built offline from its
// source.
replace github.com/ulikunitz/xz => /usr/share/gocode/src/github.com/ulikunitz/xz
