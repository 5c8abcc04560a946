console.log("no calls");
return 1;
