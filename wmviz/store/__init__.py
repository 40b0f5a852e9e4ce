"""What the app keeps: the run plan (`plan`), the run cache (`runs`), the upload store
(`uploads`), shared bundles (`bundles`), the built-in incidents (`incidents`) and the files shipped
with the package (`resources`)."""
