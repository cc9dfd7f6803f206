# image
