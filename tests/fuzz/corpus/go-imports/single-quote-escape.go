package main
import "n\x27et"
