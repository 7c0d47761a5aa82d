"""`sessionvault deploy`: the stack (`stack`), the prerequisites, the commands it runs (`runner`)."""
