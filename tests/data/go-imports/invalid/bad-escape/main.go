package main
import "n\qet"
