import "fmt"
