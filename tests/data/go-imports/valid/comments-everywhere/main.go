/* a block
   comment */ package /* x */ main // y

import /* z */ ( // w
	/* v */ "fmt" /* u */ ; "os"
)
