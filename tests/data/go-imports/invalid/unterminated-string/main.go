package main
import "net
