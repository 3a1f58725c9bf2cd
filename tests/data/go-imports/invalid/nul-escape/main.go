package main
import "net\x00"
