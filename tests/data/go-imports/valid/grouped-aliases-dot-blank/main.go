// Package main.
package main

import (
	"fmt"
	h "net/http"
	. "os/exec"
	_ "unsafe" // linkname
)
