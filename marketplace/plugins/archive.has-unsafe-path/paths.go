// What makes an entry's path unsafe, and where symbolic links lead: an extraction of the archive
// entry by entry, in order, is followed with the links it would have made so far, without
// writing anything.
package main

import (
	"errors"
	"strings"
)

// Bounds on the work and memory the links of one archive may cost: past them the archive has no
// answer (an error), never a guessed 0.
const (
	maxLinkDepth = 40       // links followed while resolving one path, as the kernel's ELOOP
	maxSteps     = 1 << 22  // path components resolved for the whole archive
	maxLinkBytes = 32 << 20 // the links' paths and targets, with linkOverhead each
	linkOverhead = 96       // what the map spends on a link besides its two strings
)

var errTooMuchWork = errors.New(
	"resolving the archive's symbolic links takes more than this plugin's bounds")

// splitPath splits a path at both separators, / and \ (an archive made on Windows, or made to be
// extracted there, uses either).
func splitPath(p string) []string {
	return strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' })
}

// isAbsolute tells whether p names a place outside any directory it is extracted to: it starts
// with a separator (a Unix root, a Windows root or UNC path), or with a drive letter ("C:",
// either followed by a separator or a path relative to that drive's own directory).
func isAbsolute(p string) bool {
	if p == "" {
		return false
	}
	if p[0] == '/' || p[0] == '\\' {
		return true
	}
	return len(p) >= 2 && p[1] == ':' && (p[0] >= 'A' && p[0] <= 'Z' || p[0] >= 'a' && p[0] <= 'z')
}

// hasDotDot tells whether a component of p, with either separator, is "..".
func hasDotDot(p string) bool {
	for _, c := range splitPath(p) {
		if c == ".." {
			return true
		}
	}
	return false
}

// unsafeName tells whether an entry's own path is unsafe: absolute or with a ".." component. A
// name with a NUL byte is judged both whole and cut at the NUL, as a C extractor reads it.
func unsafeName(p string) bool {
	if i := strings.IndexByte(p, 0); i >= 0 && unsafeName(p[:i]) {
		return true
	}
	return isAbsolute(p) || hasDotDot(p)
}

// extraction follows an extraction: the symbolic links made so far, by the path (resolved, its
// components joined by /) where each one stands.
type extraction struct {
	links     map[string]string
	linkBytes int
	steps     int
}

func newExtraction() *extraction {
	return &extraction{links: map[string]string{}}
}

// resolve returns where the relative path rel leads from the directory base (resolved
// components), following the links made so far in every component but the last, and the last too
// when followLast: escape is true when it leads above the root. A path that follows more than
// maxLinkDepth links in a row does not resolve (the kernel's ELOOP: nothing is written there) and
// does not escape.
func (x *extraction) resolve(base []string, rel []string, followLast bool,
	depth int) (out []string, escape bool, err error) {
	stack := append([]string(nil), base...)
	for i, c := range rel {
		x.steps++
		if x.steps > maxSteps {
			return nil, false, errTooMuchWork
		}
		switch c {
		case "", ".":
			continue
		case "..":
			if len(stack) == 0 {
				return nil, true, nil
			}
			stack = stack[:len(stack)-1]
			continue
		}
		stack = append(stack, c)
		if i == len(rel)-1 && !followLast {
			break
		}
		target, ok := x.links[strings.Join(stack, "/")]
		if !ok {
			continue
		}
		if depth >= maxLinkDepth {
			return nil, false, nil
		}
		if isAbsolute(target) {
			return nil, true, nil
		}
		res, esc, err := x.resolve(stack[:len(stack)-1], splitPath(target), true, depth+1)
		if err != nil || esc {
			return nil, esc, err
		}
		if res == nil {
			return nil, false, nil // a loop: nothing below it is written
		}
		stack = res
	}
	if stack == nil {
		stack = []string{}
	}
	return stack, false, nil
}

// entry judges one entry, in the archive's order: a file, directory or other entry at path name
// (link is "" and hard false), a symbolic link to link, or a hard link (hard) to the archive path
// link. It tells whether the entry is unsafe: its own path, or a link leading outside the root,
// or its path leading outside the root through a link made before it.
func (x *extraction) entry(name, link string, symlink, hard bool) (bool, error) {
	if unsafeName(name) {
		return true, nil
	}
	at, esc, err := x.resolve(nil, splitPath(name), false, 0)
	if err != nil || esc {
		return esc, err
	}
	switch {
	case hard:
		if unsafeName(link) {
			return true, nil
		}
		_, esc, err := x.resolve(nil, splitPath(link), true, 0)
		return esc, err
	case symlink:
		if i := strings.IndexByte(link, 0); i >= 0 {
			link = link[:i]
		}
		if isAbsolute(link) {
			return true, nil
		}
		if at == nil || len(at) == 0 {
			// A link that stands at the root itself, or below a loop: nowhere to be made.
			return false, nil
		}
		_, esc, err := x.resolve(at[:len(at)-1], splitPath(link), true, 0)
		if err != nil || esc {
			return esc, err
		}
		key := strings.Join(at, "/")
		x.linkBytes += len(key) + len(link) + linkOverhead
		if x.linkBytes > maxLinkBytes {
			return false, errTooMuchWork
		}
		x.links[key] = link
	}
	return false, nil
}
