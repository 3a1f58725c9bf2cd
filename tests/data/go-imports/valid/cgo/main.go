package main

// #include <stdio.h>
import "C"
