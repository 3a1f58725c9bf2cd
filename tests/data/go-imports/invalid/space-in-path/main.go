package main
import "net http"
