module lockd/sdk

go 1.19
