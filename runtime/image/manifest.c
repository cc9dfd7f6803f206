#include "config.h"
#include "image.h"
