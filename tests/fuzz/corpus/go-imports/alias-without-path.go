package main
import h
"net"
