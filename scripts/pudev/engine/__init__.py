"""The Docker engine, reached through one CLI wrapper: images, tracked
containers, and what each layer of an image holds."""
