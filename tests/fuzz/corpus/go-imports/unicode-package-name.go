package café
import "fmt"
