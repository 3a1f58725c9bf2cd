package main
import "\ud800"
