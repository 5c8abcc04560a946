console.log("before the failure");
throw new RangeError("step 2 broke");
