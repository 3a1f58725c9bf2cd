package main

import (
	"net"
)
