package main
import ""
