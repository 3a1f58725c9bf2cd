package main
/* never closed
import "net"
