"""The Database custom resource (functions/migrate): the event's checks, the reply to
CloudFormation, the function's configuration, secrets and database work, the owner connection."""
