package main
import (
	"net"
