package p;import "fmt";import("os");import x "io"
import
"bytes"
var _ = 1
import "net"
